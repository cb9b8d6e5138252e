package view

import (
	"testing"

	"github.com/driftless-dev/driftless/drift"
)

func TestViewTicketsKeepTheNewestAnswer(t *testing.T) {
	tb := table[int]{}
	tb.put(5, "x", 1, true)
	if tb.put(4, "x", 2, true) {
		t.Error("an answer older than the entry replaced it")
	}
	tb.put(6, "x", 0, false)
	if tb.put(5, "x", 3, true) || !tb["x"].gone {
		t.Error("an older answer brought back a removed object")
	}
}

func TestViewStaleStatusAgeIsNotADivergence(t *testing.T) {
	a := containerObs{c: drift.Container{ID: "c", State: drift.StateRunning, Status: "Up 3 seconds"}}
	b := a
	b.c.Status = "Up 5 minutes"
	if !sameContainer(&a, &b) {
		t.Error("a status that only aged counts as a difference")
	}
	b.c.Health = "unhealthy"
	if sameContainer(&a, &b) {
		t.Error("a health change is not a difference")
	}
}
