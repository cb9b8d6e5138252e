package load

import (
	"github.com/driftless-dev/driftless/manifest"
	"github.com/driftless-dev/driftless/manifest/policy"
)

// Options are what the app's configuration adds to its files.
type Options struct {
	// Policy is the host power the app's manifests may use; the zero
	// Policy allows none (see CheckPolicy).
	Policy policy.Policy
	// Host is where host paths are judged (see Host); the zero Host
	// judges them as written.
	Host policy.Host
	// Profiles are the compose profiles to activate; services with other
	// profiles are not part of the app.
	Profiles []string
	// Environment is what compose variables interpolate from, before the
	// app directory's .env file (compose's precedence: these win).
	Environment map[string]string
	// Limits bound what the revision may ask for; zero fields are
	// DefaultLimits().
	Limits policy.Limits
	// SecretKey is the per-agent key secret values are digested with in
	// hashes and displays; the agent and the CLI pass the same one for the
	// same data directory so their hashes agree.
	SecretKey manifest.SecretKey
	// Decrypt opens a SOPS-encrypted file of the revision (name is its
	// path in the repository, for the format and messages). nil: an app
	// that references secrets is refused.
	Decrypt func(name string, data []byte) ([]byte, error)
	// AllowPlaintext accepts secret files that are not SOPS-encrypted for
	// the whole app (decryption.allowPlaintext); a secret can also allow
	// it on its own.
	AllowPlaintext bool
	// Target is TargetSwarm for an app deployed as Swarm services: the
	// compose front end then maps the deploy: keys only Swarm carries
	// out, and CheckSwarm refuses what Swarm cannot do. "" is one engine.
	Target string
	// RemoteEngine names the engine the app is placed on when that engine
	// may be on another host: CheckRemoteEngine then refuses what needs
	// the agent's host. "" is an engine on this host.
	RemoteEngine string
	// EnvRead, when set, is called with the name of every variable of
	// Environment the load reads, whether it is set or not (a name may
	// come more than once). With the files it read, these are all the
	// loaded App depends on: the CLI's load cache keys on them.
	EnvRead func(name string)
}

// ReportEnvRead reports a read of the environment variable name.
func (o *Options) ReportEnvRead(name string) {
	if o.EnvRead != nil {
		o.EnvRead(name)
	}
}
