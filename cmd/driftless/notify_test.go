package main

import "testing"

func TestExternalURLFlagWinsOverTheFile(t *testing.T) {
	for _, tc := range []struct{ flag, file, want string }{
		{"", "https://from-file.example", "https://from-file.example"},
		{"https://flag.example/", "https://from-file.example", "https://flag.example"},
		{"", "", ""},
	} {
		f := runFlags{externalURL: tc.flag}
		if got := f.externalURLOr(tc.file); got != tc.want {
			t.Errorf("--external-url %q, file %q: %q, want %q", tc.flag, tc.file, got, tc.want)
		}
	}
}
