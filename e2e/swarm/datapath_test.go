package swarm

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// freeDataPathPort is a UDP port for the Swarm's VXLAN traffic that
// nothing on the host uses. Two Swarms on one host (tests of other
// packages, other checkouts) both number their first overlay network's
// VXLAN 4097, and the kernel refuses a second VXLAN device with the same
// number on the same port (tasks fail with "error creating vxlan
// interface: file exists"); on different ports both work. Swarm takes
// ports 1024 to 49151.
func freeDataPathPort(t testing.TB) uint32 {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(29000)
		c, err := net.ListenPacket("udp", fmt.Sprintf(":%d", port))
		if err != nil {
			continue
		}
		c.Close()
		return uint32(port)
	}
	t.Fatal("no free UDP port for the Swarm's data path")
	return 0
}
