package compose

// stateStacks are the corpus stacks for state directories.
func stateStacks() []corpusStack { return nil }

// stateEquivCases are the equivalence cases for state directories.
func stateEquivCases() []equivCase { return nil }
