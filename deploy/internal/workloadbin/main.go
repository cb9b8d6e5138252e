// Command workloadbin runs internal/workload as a standalone static binary,
// so deploy's real-engine tests can import it as an image without building
// the whole driftless CLI. `workloadbin probe URL` exits 0 when URL answers
// 2xx: the image has no shell, and exec readiness needs a command.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/driftless-dev/driftless/internal/workload"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "probe" {
		os.Exit(probe(os.Args[2]))
	}
	cfg, err := workload.ParseArgs(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(workload.Run(ctx, cfg, os.Stdout))
}

func probe(url string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintln(os.Stderr, resp.Status)
		return 1
	}
	return 0
}
