package compose

// netStacks are the corpus stacks for networks: names, static addresses, network_mode service:.
func netStacks() []corpusStack { return nil }

// netEquivCases are the equivalence cases for networks: names, static addresses, network_mode service:.
func netEquivCases() []equivCase { return nil }
