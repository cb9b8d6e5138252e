package hostroutes

import (
	"net"
	"strings"
	"testing"
)

func TestParseRoutes(t *testing.T) {
	table := `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	010200C0	0003	0	0	0	00000000	0	0	0
docker0	000011AC	00000000	0001	0	0	0	0000FFFF	0	0	0
eth0	000200C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
wg0	0000D50A	00000000	0001	0	0	0	0080FFFF	0	0	0
`
	got, err := Parse(strings.NewReader(table))
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, u := range got {
		s = append(s, u.Prefix.String()+" "+u.By)
	}
	want := "172.17.0.0/16 host route via docker0, 192.0.2.0/24 host route via eth0, 10.213.0.0/17 host route via wg0"
	if strings.Join(s, ", ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(s, ", "), want)
	}
	if _, err := Parse(strings.NewReader("h\neth0 zz 0 0 0 0 0 00FFFFFF\n")); err == nil {
		t.Error("a malformed destination was accepted")
	}
}

func TestAddressUses(t *testing.T) {
	_, lo, _ := net.ParseCIDR("127.0.0.1/8")
	v4 := &net.IPNet{IP: net.ParseIP("10.213.4.7"), Mask: net.CIDRMask(120, 128)}
	_, v6, _ := net.ParseCIDR("fd00::1/64")
	var s []string
	for _, u := range AddressUses([]net.Addr{lo, v4, v6}) {
		s = append(s, u.Prefix.String())
	}
	if strings.Join(s, ",") != "10.213.4.0/24" {
		t.Errorf("got %v, want only 10.213.4.0/24 (loopback and IPv6 skipped)", s)
	}
}
