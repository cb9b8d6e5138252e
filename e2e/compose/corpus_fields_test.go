package compose

// fieldsStacks are the corpus stacks for SELinux labels, tmpfs options, home directories and the refused fields that have a faithful mapping.
func fieldsStacks() []corpusStack { return nil }

// fieldsEquivCases are the equivalence cases for SELinux labels, tmpfs options, home directories and the refused fields that have a faithful mapping.
func fieldsEquivCases() []equivCase { return nil }
