package remoteprobe

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"
)

// imageRepo is the repository of the probe image; its tag is the first 12
// hex digits of the agent binary's sha256, so a new agent makes a new image.
const imageRepo = "driftless-probe"

// binaryPath is where the agent's binary sits in the probe image.
const binaryPath = "/driftless"

// image is the probe image made from one agent binary.
type image struct {
	ref  string // driftless-probe:<hash>
	path string // the binary on the agent's host
}

// imageOf checks that the binary at path can run alone in an empty image
// (a static ELF executable) and names its image by its content.
func imageOf(path string) (image, error) {
	f, err := os.Open(path)
	if err != nil {
		return image{}, fmt.Errorf("read the agent's binary: %w", err)
	}
	defer f.Close()
	if err := checkStatic(f, path); err != nil {
		return image{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return image{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return image{}, fmt.Errorf("read the agent's binary: %w", err)
	}
	return image{ref: imageRepo + ":" + hex.EncodeToString(h.Sum(nil))[:12], path: path}, nil
}

// checkStatic says why the executable in r cannot be the probe image's
// only file: it is not an ELF executable (the agent runs on another
// system than Linux), or it asks for a dynamic loader (built with cgo).
func checkStatic(r io.ReaderAt, path string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return fmt.Errorf("the agent's binary %s is not a Linux (ELF) executable, so it cannot be the probe image on a remote engine: %w", path, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the agent's binary %s is dynamically linked (it asks for an ELF interpreter), so it cannot run alone in the probe image on a remote engine: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// imageTar is the import tar of the probe image: the binary alone, as
// /driftless, mode 0755, with a fixed time so the same binary gives the
// same layer.
func imageTar(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Name: binaryPath[1:], Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
