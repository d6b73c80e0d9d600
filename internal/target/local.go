package target

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// LoopbackPort returns the TCP port of the service at u when its host is a
// loopback address, "localhost" or the unspecified address (which reaches
// this host too), the case where the process can be found on this machine
// and read through /proc. It reports false otherwise.
func LoopbackPort(u *url.URL) (int, bool) {
	host, portStr := u.Hostname(), u.Port()
	if portStr == "" {
		portStr = "80"
		if u.Scheme == "https" {
			portStr = "443"
		}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return 0, false
	}
	if strings.EqualFold(host, "localhost") {
		return int(port), true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || !(addr.IsLoopback() || addr.IsUnspecified()) {
		return 0, false
	}
	return int(port), true
}
