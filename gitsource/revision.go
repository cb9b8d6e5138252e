// Package gitsource produces revisions of an app's manifests from a Git
// repository: it clones once into the data directory, then fetches.
package gitsource

import "time"

// Revision is one commit of the tracked ref, as the loop sees it.
type Revision struct {
	SHA     string    `json:"sha"`
	Author  string    `json:"author"`
	Email   string    `json:"email,omitempty"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	// Revert is true when the commit message says "This reverts commit <sha>".
	Revert bool `json:"revert,omitempty"`
	// Reverts is the SHA the commit reverts, when Revert is true.
	Reverts string `json:"reverts,omitempty"`
	// SignedBy is who signed the commit, set once its signature was
	// verified (apps with verify on); zero otherwise.
	SignedBy Signer `json:"signedBy,omitzero"`
}

// Short is the abbreviated SHA shown to people.
func (r Revision) Short() string {
	if len(r.SHA) > 7 {
		return r.SHA[:7]
	}
	return r.SHA
}
