// Package localorigin keeps web pages away from a server meant for this
// machine (trainer serve, trainer inspect): a page on another site can
// make a browser send a "simple" request to a loopback port, or, by DNS
// rebinding, make its own host name point at 127.0.0.1. Check refuses both:
// a Host header that is not a loopback name or the address the server was
// told to listen on, and a browser request from another origin.
package localorigin

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Check returns why r must be refused, or nil. listen is the host the
// server listens on ("" or a loopback address: this machine only).
//
// The Host header must name localhost, a loopback address, or listen
// itself; a server listening on every interface (0.0.0.0, ::) also takes
// any IP address, which no rebinding can supply. A browser request from
// another origin is refused: an Origin header naming another host and
// port than Host (or "null"), or Sec-Fetch-Site cross-site or same-site,
// except a GET that navigates to a page (following a link).
func Check(r *http.Request, listen string) error {
	host := hostOnly(r.Host)
	if !allowedHost(host, listen) {
		return fmt.Errorf("host %q refused: this server answers to localhost, a loopback address or %q only (a web page's DNS rebinding would name another)", r.Host, listen)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if o == "null" || err != nil || hostPort(u.Host, u.Scheme) != hostPort(r.Host, "http") {
			return fmt.Errorf("a request from origin %q refused: only pages of this server (%s) may call it", o, r.Host)
		}
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		if r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate" {
			return nil
		}
		return fmt.Errorf("a %s request from another site refused: only pages of this server (%s) may call it", r.Header.Get("Sec-Fetch-Site"), r.Host)
	}
	return nil
}

// allowedHost reports whether a Host name may be served.
func allowedHost(host, listen string) bool {
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return true
	}
	l := strings.ToLower(strings.Trim(listen, "[]"))
	if ip != nil && (l == "0.0.0.0" || l == "::") {
		return true
	}
	return l != "" && host == l
}

// hostOnly is a Host header without its port and brackets.
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return strings.Trim(host, "[]")
	}
	return strings.Trim(h, "[]")
}

// hostPort is host:port in lower case, the scheme's default port written.
func hostPort(h, scheme string) string {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.Trim(h, "[]"), map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}
