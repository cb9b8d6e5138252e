// Package sources: TEMPORARY stub of the API a helper is writing; replaced on merge.
package sources

import "io/fs"

type Generator struct {
	Directories []string
	Exclude     []string
	File        string
}

func (g Generator) Validate() error { return nil }

type App struct {
	Name, Path  string
	Branch, Tag string
	Interval    string
	Prune       *bool
	SelfHeal    *bool
	Profiles    []string
	Release     *Release
	At          string
}

type Release struct {
	Watch       string `json:"watch,omitempty"`
	UnreadyFor  string `json:"unreadyFor,omitempty"`
	MaxRestarts *int   `json:"maxRestarts,omitempty"`
}

func Discover(fsys fs.FS, g Generator, maxApps int) ([]App, error) { return nil, nil }

func AppName(dir string) string { return dir }
