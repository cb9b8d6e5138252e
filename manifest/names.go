package manifest

import (
	"regexp"
)

// MaxDNSLabel is the longest DNS label: the longest app or object name,
// host name, and Swarm service name. A container name may be longer, as
// with docker compose: Docker takes it, and its embedded DNS then resolves
// the service's name (the alias every replica has) but not the container's.
const MaxDNSLabel = 63

// ReservedLabelPrefix mirrors drift.LabelPrefix (drift imports this package,
// so it cannot be imported here). User labels must not forge driftless's own
// ownership labels.
const ReservedLabelPrefix = "dev.driftless."

// dockerName is the pattern the Docker Engine accepts for container, network
// and volume names.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// driverName is the pattern of a volume, network or logging driver's name.
var driverName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:-]*$`)

// ValidDriverName reports whether s can name a volume, network or logging
// driver.
func ValidDriverName(s string) bool { return driverName.MatchString(s) }

// ValidDockerName reports whether s is a name the Docker Engine accepts
// for a container, network or volume.
func ValidDockerName(s string) bool { return dockerName.MatchString(s) }

// ValidName reports whether s is a DNS label as driftless uses it for app and
// object names: lowercase letters, digits and '-', starting with a letter,
// ending with a letter or digit, at most 63 characters.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxDNSLabel {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' || c == '-':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return s[len(s)-1] != '-'
}

const NameRule = "must be a DNS label: lowercase letters, digits and '-', starting with a letter, ending with a letter or digit, at most 63 characters"

// ValidObjectName reports whether s can name an object of an app (a
// service, network, volume, secret or config): a DNS label as RFC 1123 has
// it, which may start with a digit ("2fauth", "1panel-network", names
// compose takes), with at least one letter so that it never reads as an
// address. App names keep ValidName's stricter rule: apps found by
// directory are named by AppName, and widening it would rename apps
// already running.
func ValidObjectName(s string) bool {
	if s == "" || len(s) > MaxDNSLabel || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			letter = true
		case c >= '0' && c <= '9' || c == '-':
		default:
			return false
		}
	}
	return letter
}

// ObjectNameRule says what ValidObjectName takes.
const ObjectNameRule = "must be a DNS label: lowercase letters, digits and '-', with at least one letter, starting and ending with a letter or digit, at most 63 characters"
