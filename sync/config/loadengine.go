package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// LoadEngine reads the engines: of the driftless.yaml at path and returns
// the one called name, for a one-shot command that works on it as the
// agent would. Only engines: is read, and checked as the agent checks it;
// the rest of the file is not, so a file whose apps need secrets from the
// agent's environment still serves.
func LoadEngine(path, name string) (EngineConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return EngineConfig{}, err
	}
	var fc struct {
		Engines []fileEngine `json:"engines"`
	}
	if err := yaml.Unmarshal(data, &fc); err != nil {
		return EngineConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	rel := relativeTo(filepath.Dir(path))
	engines, errs := parseEngines(fc.Engines, rel, secretReader(rel, os.Getenv), os.Getenv)
	if len(errs) > 0 {
		return EngineConfig{}, fmt.Errorf("%s: %w", path, errs[0])
	}
	names := []string{LocalEngine}
	for _, e := range engines {
		if e.Name == name {
			return e, nil
		}
		names = append(names, e.Name)
	}
	return EngineConfig{}, fmt.Errorf("%s: no engine %q under engines: (known: %s)", path, name, strings.Join(names, ", "))
}
