package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fromDockerContext fills fe's host and TLS files from the Docker context
// it names, as `docker --context NAME` reads it: the context's metadata
// and TLS files under the Docker configuration directory ($DOCKER_CONFIG,
// else ~/.docker, of the user the agent runs as), stored by the SHA-256
// of the context's name. The engine is then checked like one written out.
func fromDockerContext(fe *fileEngine) error {
	if fe.Host != "" || fe.TLS != nil {
		return errors.New("context: give host (and tls) or context, not both")
	}
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("context %s: %w", fe.Context, err)
		}
		dir = filepath.Join(home, ".docker")
	}
	sum := sha256.Sum256([]byte(fe.Context))
	id := hex.EncodeToString(sum[:])
	data, err := os.ReadFile(filepath.Join(dir, "contexts", "meta", id, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("context: no Docker context %q in %s (docker context ls lists them; the agent reads the contexts of the user it runs as)", fe.Context, dir)
	}
	if err != nil {
		return fmt.Errorf("context %s: %w", fe.Context, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host          string `json:"Host"`
			SkipTLSVerify bool   `json:"SkipTLSVerify"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("context %s: %s: %w", fe.Context, filepath.Join(dir, "contexts", "meta", id, "meta.json"), err)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return fmt.Errorf("context %s: it has no Docker endpoint", fe.Context)
	}
	if ep.SkipTLSVerify {
		return fmt.Errorf("context %s: it skips TLS verification, which an engine of the agent may not; give host and tls: instead", fe.Context)
	}
	fe.Host = ep.Host
	tlsDir := filepath.Join(dir, "contexts", "tls", id, "docker")
	if _, err := os.Stat(tlsDir); err == nil {
		fe.TLS = &fileEngineTLS{CAFile: filepath.Join(tlsDir, "ca.pem"), CertFile: filepath.Join(tlsDir, "cert.pem"), KeyFile: filepath.Join(tlsDir, "key.pem")}
	}
	return nil
}
