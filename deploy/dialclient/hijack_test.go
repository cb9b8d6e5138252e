package dialclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/driftless-dev/driftless/deploy/internal/requestcount"
)

// TestDialedClientHijacksThroughDial: an exec attach (a hijacked
// connection: the remote readiness probe's) goes through the dial function like
// every request. With a transport that may speak HTTP/2, the client's
// clone of it carried a TLS config, and the client dialed "http" "docker"
// itself ("dial http: unknown network http").
func TestDialedClientHijacksThroughDial(t *testing.T) {
	refuse := errors.New("ssh: the key was refused")
	var dials []string
	dial := func(_ context.Context, network, addr string) (net.Conn, error) {
		dials = append(dials, network+" "+addr)
		return nil, refuse
	}
	cli, err := client.New(Options(&http.Transport{DisableKeepAlives: true}, dial, requestcount.Hook(requestcount.NewCounter()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = cli.ExecAttach(context.Background(), "exec1", client.ExecAttachOptions{})
	// The client's version ping dials first; the hijack's dial is the last.
	if !errors.Is(err, refuse) || strings.Contains(err.Error(), "unknown network") || len(dials) == 0 || dials[len(dials)-1] != "http docker" {
		t.Errorf("exec attach: %v after dials %q; want the hijack dialed through dial, refused", err, dials)
	}
}
