package compose

import "slices"

// roundTwoStacks are the stacks of issue 26 (compose round two): compose
// files written like the ones self-hosted projects publish, with
// anonymous volumes, state directories, SELinux labels, extends across
// files, static addresses and shared network namespaces. Each group is in
// its own file, with its equivalence cases.
func roundTwoStacks() []corpusStack {
	return slices.Concat(anonStacks(), stateStacks(), netStacks(), extendsStacks(), fieldsStacks(), restartStacks())
}

// roundTwoEquivCases are the equivalence cases of issue 26's groups.
func roundTwoEquivCases() []equivCase {
	return slices.Concat(anonEquivCases(), stateEquivCases(), netEquivCases(), extendsEquivCases(), fieldsEquivCases())
}
