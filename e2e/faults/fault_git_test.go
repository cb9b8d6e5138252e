package faults

import (
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftless-dev/driftless/e2e/gitserver"
	"github.com/driftless-dev/driftless/e2e/testenv"
	"github.com/driftless-dev/driftless/sync/status"
)

// TestFaultGitServerKilledMidTransfer kills the git server (git-daemon and
// the upload-pack serving the agent) while the agent downloads a large
// commit through a slow link: first during the agent's very first clone,
// then during a fetch of a new commit. Each time the source error shows,
// nothing is deployed or changed meanwhile (the last good revision keeps
// running and keeps healing, even across an agent restart during the
// outage), and once the server is back the agent converges to the head.
func TestFaultGitServerKilledMidTransfer(t *testing.T) {
	t.Parallel()
	row := recordFault(t, "git server killed mid-transfer")
	v1 := testenv.WorkloadImage(t, "v1")
	var daemon *gitserver.KillableDaemon
	var link *slowLink
	serve := func(t *testing.T, base string) string {
		daemon = gitserver.RunKillableDaemon(t, base)
		link = startSlowLink(t, strings.TrimPrefix(daemon.URL, "git://"), 1<<20) // 1 MiB/s
		return "git://" + link.addr()
	}
	const blobSize = 2 << 20 // 2 MiB, incompressible: about 2s through the link
	first := svcState{Image: v1, Replicas: 2, Env: map[string]string{"MESSAGE": "one"}}
	r := newFaultRig(t, first, rigOptions{serve: serve, noStart: true,
		extraFiles: map[string]string{"assets/blob1.bin": randomBlob(1, blobSize)}})
	r.foreign = plantForeign(t, r.dk, r.app, v1)

	// 1. The first clone breaks half-way.
	killed := link.killAfter(256<<10, daemon.Kill)
	r.start()
	waitKilled(t, killed, "the first clone")
	row.add(1)
	st := r.wait(20*time.Second, "a source error after the clone broke", func(st status.AppStatus) bool { return st.Source.Error != "" })
	t.Logf("clone broken: source error %q; message %q", st.Source.Error, st.Message)
	if st.Applied != nil || !strings.Contains(st.Message, "nothing deployed yet") {
		t.Errorf("after a broken first clone: applied %s, message %q; want nothing deployed and said so", testenv.RevShort(st.Applied), st.Message)
	}
	time.Sleep(2 * time.Second)
	if cs := r.dk.appContainers(t, r.app); len(cs) != 0 {
		t.Fatalf("containers were created from a clone that never completed: %+v", cs)
	}
	daemon.Start(t)
	back := time.Now()
	r.waitHead(60*time.Second, "the first deploy once the git server is back")
	cloneBack := time.Since(back)
	r.checkRunning("after the broken clone")
	r.wait(10*time.Second, "the source error to clear", func(st status.AppStatus) bool { return st.Source.Error == "" })

	// 2. A fetch of a new commit breaks half-way.
	good := r.head()
	before := idsOf(r.dk.appContainers(t, r.app))
	r.repo.WriteFile("assets/blob2.bin", randomBlob(2, blobSize))
	killed = link.killAfter(256<<10, daemon.Kill)
	r.commit("scale to 3, with a large asset", first.with(func(s *svcState) { s.Replicas = 3 }))
	waitKilled(t, killed, "the fetch of the new commit")
	row.add(1)
	st = r.wait(20*time.Second, "a source error after the fetch broke", func(st status.AppStatus) bool { return st.Source.Error != "" })
	t.Logf("fetch broken: source error %q; message %q", st.Source.Error, st.Message)
	if st.Applied == nil || st.Applied.SHA != good || !strings.Contains(st.Message, "still running "+good[:7]) {
		t.Errorf("after a broken fetch: applied %s, message %q; want %s still running and said so", testenv.RevShort(st.Applied), st.Message, good[:7])
	}
	if after := idsOf(r.dk.appContainers(t, r.app)); !maps.Equal(after, before) {
		t.Fatalf("containers changed after a broken fetch: %v, want %v", after, before)
	}
	// The outage goes on; an agent restarted now still enforces the last
	// good revision: a removed replica comes back.
	r.agent.Stop(t)
	r.start()
	victim := r.app + "-web-1"
	old := before[victim]
	r.dk.run(t, "rm", "-f", victim)
	if !pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		out, err := r.dk.try("inspect", "-f", "{{.Id}} {{.State.Running}}", victim)
		return err == nil && !strings.HasPrefix(out, old) && strings.HasSuffix(out, "true")
	}) {
		t.Fatalf("with the git server down, an agent restarted after the broken fetch did not recreate %s (the last good revision must keep being enforced)", victim)
	}
	daemon.Start(t)
	back = time.Now()
	r.waitHead(60*time.Second, "the new commit once the git server is back")
	fetchBack := time.Since(back)
	r.checkRunning("after the broken fetch")
	entries := r.checkHistory("at the end", nil)
	var failed, recovered int
	for _, e := range entries {
		if e.Kind == status.KindSource && e.Result == "failed" {
			failed++
		}
		if e.Kind == status.KindSource && e.Result == "succeeded" {
			recovered++
		}
	}
	if failed < 2 || recovered < 2 {
		t.Errorf("history has %d source failures and %d recoveries; want one of each per outage", failed, recovered)
	}
	recloned := 0
	for line := range strings.Lines(r.agentLogs()) {
		if strings.Contains(line, "git clone looks corrupt") || strings.Contains(line, "re-cloning") {
			recloned++
			t.Logf("the agent deleted its clone: %s", strings.TrimSpace(line))
		}
	}
	t.Logf("converged %s after the server came back from the broken clone, %s after the broken fetch; the clone was deleted as corrupt %d times",
		cloneBack.Round(time.Millisecond), fetchBack.Round(time.Millisecond), recloned)
	row.note("converged %s / %s after the server was back", cloneBack.Round(100*time.Millisecond), fetchBack.Round(100*time.Millisecond))
}

// agentLogs is what every agent process of the rig printed so far.
func (r *faultRig) agentLogs() string { return r.pastLogs.String() + r.agent.Logs() }

func waitKilled(t *testing.T, killed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatalf("the git server was not killed during %s within 60s: no transfer got that far", what)
	}
}

// randomBlob is n incompressible bytes, the same for the same seed.
func randomBlob(seed uint64, n int) string {
	var key [32]byte
	key[0] = byte(seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return string(b)
}

// slowLink is a TCP proxy in front of a git server that passes the
// server's bytes on at a fixed rate, so a large transfer takes long enough
// to be interrupted at a known point.
type slowLink struct {
	ln       net.Listener
	upstream string
	rate     int // bytes per second, server to client

	mu    sync.Mutex
	trip  int64 // a connection that passed this many bytes trips
	onTip func()
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func startSlowLink(t *testing.T, upstream string, rate int) *slowLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &slowLink{ln: ln, upstream: upstream, rate: rate, conns: map[net.Conn]bool{}}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.wg.Go(func() { l.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); l.wg.Wait() })
	return l
}

func (l *slowLink) addr() string { return l.ln.Addr().String() }

// killAfter arms the link: once one connection has passed n bytes from
// the server, kill runs (once), every connection through the link is
// closed and the returned channel closes. What the server had sent but the
// link not yet passed on is lost: the client sees the end of the stream
// exactly where the server died.
func (l *slowLink) killAfter(n int64, kill func()) <-chan struct{} {
	done := make(chan struct{})
	l.mu.Lock()
	l.trip = n
	l.onTip = func() {
		kill()
		l.mu.Lock()
		for c := range l.conns {
			c.Close()
		}
		l.mu.Unlock()
		close(done)
	}
	l.mu.Unlock()
	return done
}

func (l *slowLink) track(cs ...net.Conn) func() {
	l.mu.Lock()
	for _, c := range cs {
		l.conns[c] = true
	}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		for _, c := range cs {
			delete(l.conns, c)
		}
		l.mu.Unlock()
	}
}

func (l *slowLink) serve(c net.Conn) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", l.upstream, 5*time.Second)
	if err != nil {
		return // the server is down: the client sees the connection close
	}
	defer up.Close()
	defer l.track(c, up)()
	go func() {
		_, _ = io.Copy(up, c)
		up.(*net.TCPConn).CloseWrite()
	}()
	buf := make([]byte, 16<<10)
	var total int64
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
			total += int64(n)
			time.Sleep(time.Duration(n) * time.Second / time.Duration(l.rate))
			l.mu.Lock()
			var fire func()
			if l.onTip != nil && total >= l.trip {
				fire, l.onTip = l.onTip, nil
			}
			l.mu.Unlock()
			if fire != nil {
				go fire()
			}
		}
		if err != nil {
			return
		}
	}
}
