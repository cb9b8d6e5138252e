package compose

// anonStacks are the corpus stacks for anonymous volumes.
func anonStacks() []corpusStack { return nil }

// anonEquivCases are the equivalence cases for anonymous volumes.
func anonEquivCases() []equivCase { return nil }
