package main

import (
	"context"
	"io"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return 2
}
