package yamlpos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driftless-dev/driftless/manifest"
)

// Collector gathers every error of a revision.
type Collector struct {
	Errs manifest.ErrorList
}

func (c *Collector) Add(pos manifest.Position, field, format string, args ...any) {
	c.Errs = append(c.Errs, &manifest.Error{Pos: pos, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (c *Collector) Sorted() manifest.ErrorList {
	l := slices.Clone(c.Errs)
	slices.SortStableFunc(l, func(a, b *manifest.Error) int {
		if a.Pos.File != b.Pos.File {
			return strings.Compare(a.Pos.File, b.Pos.File)
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		if a.Pos.Column != b.Pos.Column {
			return a.Pos.Column - b.Pos.Column
		}
		if a.Field != b.Field {
			return strings.Compare(a.Field, b.Field)
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return slices.CompactFunc(l, func(a, b *manifest.Error) bool { return *a == *b })
}
