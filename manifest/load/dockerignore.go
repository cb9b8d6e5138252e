package load

import (
	"fmt"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// dockerIgnore is a parsed .dockerignore, matched by the code docker
// build's client runs: github.com/moby/patternmatcher, read by its
// ignorefile package. Its rules differ from .driftlessignore's
// (gitignore): every pattern is anchored at the context's root ("*.md" is
// only the root's), a pattern also excludes everything under a directory
// it matches, the last matching pattern wins, and "!" can include a file
// again inside an excluded directory only when the "!" pattern starts
// with that directory's path (the client does not enter the directory
// otherwise). Patterns are cleaned like paths: a leading / or ./ changes
// nothing, and "/", "." and ".." match nothing. "[!a]" is a class of '!'
// and 'a', as in Go's filepath.Match, not a negation. The nil list
// excludes nothing.
type dockerIgnore struct {
	pm *patternmatcher.PatternMatcher
}

// parseDockerIgnore parses .dockerignore text for a context whose
// Dockerfile is dockerfile. A pattern docker would refuse is an error, as
// docker build fails on it.
func parseDockerIgnore(text, dockerfile string) (*dockerIgnore, error) {
	patterns, err := ignorefile.ReadAll(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DockerIgnoreFile, err)
	}
	pm, err := patternmatcher.New(keepBuildFiles(patterns, dockerfile))
	if err != nil {
		for _, p := range patterns {
			if _, perr := patternmatcher.New([]string{p}); perr != nil {
				return nil, fmt.Errorf("%s: pattern %q: %v", DockerIgnoreFile, p, perr)
			}
		}
		return nil, fmt.Errorf("%s: %w", DockerIgnoreFile, err)
	}
	return &dockerIgnore{pm: pm}, nil
}

// keepBuildFiles is the docker client's TrimBuildFilesFromExcludes: the
// .dockerignore and the Dockerfile are sent even when excluded (the
// daemon reads them, then drops them from the context), by an exception
// at the end. The exception also counts in the walk (contextWalk), so it
// is added exactly where docker adds it, with the function docker uses.
func keepBuildFiles(patterns []string, dockerfile string) []string {
	for _, f := range []string{DockerIgnoreFile, dockerfile} {
		// Matches, not MatchesOrParentMatches: docker's client decides
		// with this one.
		if keep, _ := patternmatcher.Matches(f, patterns); keep {
			patterns = append(patterns, "!"+f)
		}
	}
	return patterns
}

// contextWalk applies a .dockerignore along a walk of the context, in
// the walk's (lexical) order, as the docker client's archiver does
// (github.com/moby/go-archive, TarWithOptions): each path is matched with
// its parent directory's results, and an excluded directory is skipped
// whole unless an exception pattern starts with its path.
type contextWalk struct {
	ign     *dockerIgnore
	parents []string
	infos   []patternmatcher.MatchInfo
}

// visit says whether rel (a slash path relative to the context, not ".")
// is excluded and, for a directory, whether to skip what is under it.
func (w *contextWalk) visit(rel string, isDir bool) (excluded, skipDir bool, err error) {
	if w.ign == nil {
		return false, false, nil
	}
	for len(w.parents) > 0 && !strings.HasPrefix(rel, w.parents[len(w.parents)-1]+"/") {
		w.parents, w.infos = w.parents[:len(w.parents)-1], w.infos[:len(w.infos)-1]
	}
	var parent patternmatcher.MatchInfo
	if len(w.infos) > 0 {
		parent = w.infos[len(w.infos)-1]
	}
	excluded, info, err := w.ign.pm.MatchesUsingParentResults(rel, parent)
	if err != nil {
		return false, false, fmt.Errorf("%s: %v", DockerIgnoreFile, err)
	}
	if !isDir {
		return excluded, false, nil
	}
	w.parents, w.infos = append(w.parents, rel), append(w.infos, info)
	return excluded, excluded && !w.ign.exceptionUnder(rel), nil
}

// exceptionUnder reports whether an exception ("!") pattern starts with
// dir's path, so that the client enters dir although it is excluded.
func (d *dockerIgnore) exceptionUnder(dir string) bool {
	for _, p := range d.pm.Patterns() {
		if p.Exclusion() && strings.HasPrefix(p.String()+"/", dir+"/") {
			return true
		}
	}
	return false
}
