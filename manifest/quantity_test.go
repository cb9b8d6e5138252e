package manifest

import (
	"strings"
	"testing"
)

func TestParseMemory(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1024": 1024, "512Mi": 512 << 20, "1Gi": 1 << 30, "1.5Gi": 3 << 29,
		"2Ki": 2048, "1Ti": 1 << 40, "1K": 1000, "256M": 256e6, "2G": 2e9, "1T": 1e12,
	}
	for in, want := range good {
		if got, err := ParseMemory(in); err != nil || got != want {
			t.Errorf("ParseMemory(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "512Mo", "-1Mi", "1.5", "Mi", "1e3", "1/2Gi", "0x10", "99999999999Ti", "1 Gi"} {
		if got, err := ParseMemory(in); err == nil {
			t.Errorf("ParseMemory(%q) = %d, want error", in, got)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	good := map[string]int64{"0": 0, "0.5": 5e8, "2": 2e9, "500m": 5e8, "1m": 1e6, ".25": 25e7, "1.000000001": 1000000001}
	for in, want := range good {
		if got, err := ParseCPUs(in); err != nil || got != want {
			t.Errorf("ParseCPUs(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "half", "0.0000000001", "5mm", "1e9"} {
		if got, err := ParseCPUs(in); err == nil {
			t.Errorf("ParseCPUs(%q) = %d, want error", in, got)
		}
	}
}

func TestFormatQuantities(t *testing.T) {
	mem := map[int64]string{0: "0", 512 << 20: "512Mi", 1 << 30: "1Gi", 1536: "1536", 1000: "1000", 3 << 29: "1536Mi"}
	for in, want := range mem {
		if got := FormatMemory(in); got != want {
			t.Errorf("FormatMemory(%d) = %q, want %q", in, got, want)
		}
		if back, err := ParseMemory(FormatMemory(in)); err != nil || back != in {
			t.Errorf("FormatMemory(%d) does not round-trip: %d, %v", in, back, err)
		}
	}
	cpus := map[int64]string{0: "0", 5e8: "0.5", 2e9: "2", 1500000000: "1.5", 1: "0.000000001"}
	for in, want := range cpus {
		if got := FormatCPUs(in); got != want {
			t.Errorf("FormatCPUs(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, s := range []string{"a", "web", "web-2", "a1", "a" + strings.Repeat("b", 62)} {
		if !ValidName(s) {
			t.Errorf("ValidName(%q) = false", s)
		}
	}
	for _, s := range []string{"", "Web", "1web", "-web", "web-", "web_1", "web.1", "wéb", "a" + strings.Repeat("b", 63)} {
		if ValidName(s) {
			t.Errorf("ValidName(%q) = true", s)
		}
	}
}

func TestValidObjectName(t *testing.T) {
	for _, s := range []string{"a", "web", "2fauth", "1panel-network", "a1", "9-b", "a" + strings.Repeat("b", 62)} {
		if !ValidObjectName(s) {
			t.Errorf("ValidObjectName(%q) = false", s)
		}
	}
	// All digits would read as an address ("2048" resolves as 0.0.8.0).
	for _, s := range []string{"", "2048", "1-2", "Web", "-web", "web-", "web_1", "web.1", "wéb", "a" + strings.Repeat("b", 63)} {
		if ValidObjectName(s) {
			t.Errorf("ValidObjectName(%q) = true", s)
		}
	}
}
