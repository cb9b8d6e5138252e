package manifest

import (
	"fmt"
	"strings"
)

// String writes r as one line for the differ and messages:
// "nvidia count=all caps=[gpu]", "nvidia ids=0,1 caps=[gpu,utility]".
func (r DeviceRequest) String() string {
	var parts []string
	if r.Driver != "" {
		parts = append(parts, r.Driver)
	} else {
		parts = append(parts, "(any driver)")
	}
	switch {
	case r.Count == DeviceCountAll:
		parts = append(parts, "count=all")
	case r.Count != 0:
		parts = append(parts, fmt.Sprintf("count=%d", r.Count))
	}
	if len(r.DeviceIDs) > 0 {
		parts = append(parts, "ids="+strings.Join(r.DeviceIDs, ","))
	}
	if len(r.Capabilities) > 0 {
		var alts []string
		for _, c := range r.Capabilities {
			alts = append(alts, "["+strings.Join(c, ",")+"]")
		}
		parts = append(parts, "caps="+strings.Join(alts, "|"))
	}
	if len(r.Options) > 0 {
		parts = append(parts, "options="+fmtOptions(r.Options))
	}
	return strings.Join(parts, " ")
}

// Problem says what is wrong with r as written (count and device IDs
// together, a negative count other than all, an empty device ID), "" if
// nothing. Docker's nvidia driver refuses count with IDs only when a
// replica starts; compose refuses it on load, as does driftless.
func (r DeviceRequest) Problem() string {
	switch {
	case r.Count != 0 && len(r.DeviceIDs) > 0:
		return "count and device IDs are exclusive: ask for a number of devices or name them"
	case r.Count < DeviceCountAll:
		return fmt.Sprintf("count must be all or a number of devices, got %d", r.Count)
	}
	for _, id := range r.DeviceIDs {
		if strings.TrimSpace(id) == "" {
			return "a device ID must not be empty"
		}
	}
	return ""
}

// fmtOptions writes options as sorted key=value pairs joined by commas.
func fmtOptions(m map[string]string) string {
	var kv []string
	for _, k := range sortedKeys(m) {
		kv = append(kv, k+"="+m[k])
	}
	return strings.Join(kv, ",")
}
