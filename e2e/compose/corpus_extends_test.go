package compose

// extendsStacks are the corpus stacks for extends across files.
func extendsStacks() []corpusStack { return nil }

// extendsEquivCases are the equivalence cases for extends across files.
func extendsEquivCases() []equivCase { return nil }
