package logstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"

	"github.com/driftless-dev/driftless/drift"
)

func TestLogRedactor(t *testing.T) {
	r := NewRedactor(
		[]string{"DB_PASSWORD=hunter2-long", "PIN=12", "LOG_LEVEL=debug", "API_TOKEN=hunter2-long-token", "EMPTY="},
		[]string{"DB_PASSWORD", "PIN", "API_TOKEN", "EMPTY"})
	got := r.Line("connecting with hunter2-long, token hunter2-long-token, level debug, pin 12")
	want := "connecting with " + Redacted + ", token " + Redacted + ", level debug, pin 12"
	if got != want {
		t.Errorf("Line = %q\nwant   %q", got, want)
	}
	if got := (Redactor{}).Line("plain"); got != "plain" {
		t.Errorf("empty redactor changed text: %q", got)
	}
}

func TestMatchLogTargetsOwnedOnly(t *testing.T) {
	cs := []drift.Container{
		{Name: "shop-web-2", App: "shop", Service: "web"},
		{Name: "shop-web-1", App: "shop", Service: "web"},
		{Name: "shop-db-1", App: "shop", Service: "db"},
		{Name: "blog-web-1", App: "blog", Service: "web"},
	}
	for _, tt := range []struct{ name, want string }{
		{"", "shop-db-1 shop-web-1 shop-web-2"},
		{"web", "shop-web-1 shop-web-2"},
		{"shop-db-1", "shop-db-1"},
	} {
		got, err := MatchTargets(cs, "shop", tt.name)
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("MatchTargets(%q) = %v, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	for _, foreign := range []string{"blog-web-1", "nginx", "shop-web-9"} {
		_, err := MatchTargets(cs, "shop", foreign)
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "shop-web-1") {
			t.Errorf("MatchTargets(%q) err = %v, want ErrNotOwned naming the app's containers", foreign, err)
		}
	}
	if _, err := MatchTargets(nil, "shop", ""); !errors.Is(err, ErrNotOwned) {
		t.Errorf("no containers: err = %v", err)
	}
}

func TestDemuxLines(t *testing.T) {
	var raw bytes.Buffer
	frame(&raw, stdcopy.Stdout, "first line\nsecond ")
	frame(&raw, stdcopy.Stderr, "oops\n")
	frame(&raw, stdcopy.Stdout, "half\nno newline at end")
	var got []string
	err := demuxLines(io.NopCloser(&raw), func(stream, text string) error {
		got = append(got, stream+":"+text)
		return nil
	}, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// stdout lines keep their order; stderr's line is in between
	// somewhere, so compare per stream.
	var stdout, stderr []string
	for _, g := range got {
		if s, ok := strings.CutPrefix(g, "stdout:"); ok {
			stdout = append(stdout, s)
		} else {
			stderr = append(stderr, strings.TrimPrefix(g, "stderr:"))
		}
	}
	if strings.Join(stdout, "|") != "first line|second half|no newline at end" || strings.Join(stderr, "|") != "oops" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}

	// An emit error ends the stream with that error.
	raw.Reset()
	frame(&raw, stdcopy.Stdout, "a\nb\nc\n")
	stopErr := errors.New("client went away")
	n := 0
	err = demuxLines(io.NopCloser(&raw), func(string, string) error { n++; return stopErr }, func() error { return nil })
	if !errors.Is(err, stopErr) || n != 1 {
		t.Errorf("emit error: err = %v after %d lines", err, n)
	}
}

// frame writes one frame of Docker's multiplexed log format: stream byte,
// three zero bytes, big-endian length, payload.
func frame(w *bytes.Buffer, stream stdcopy.StdType, payload string) {
	hdr := make([]byte, 8)
	hdr[0] = byte(stream)
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	w.Write(hdr)
	w.WriteString(payload)
}
