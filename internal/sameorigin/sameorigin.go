// Package sameorigin keeps an HTTP client's redirects within the origin
// (scheme, host and port) it was asked to reach, so that headers set for
// one service (an API key) and bodies meant for it (an episode with its
// gold answers) never go to another. net/http alone copies custom headers
// to any host, re-posts a body on 307 and 308, and keeps Authorization for
// another port of the same host.
package sameorigin

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MaxRedirects bounds a chain of redirects, as net/http's default does.
const MaxRedirects = 10

// CheckRedirect is an http.Client CheckRedirect that follows up to
// MaxRedirects redirects within the first request's origin and refuses one
// to another origin, saying so; with cross it follows that one too, after
// removing the headers named in strip from the request.
func CheckRedirect(cross bool, strip http.Header) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= MaxRedirects {
			return fmt.Errorf("stopped after %d redirects", MaxRedirects)
		}
		if Origin(req.URL) == Origin(via[0].URL) {
			return nil
		}
		if !cross {
			return fmt.Errorf("redirect to another origin (%s) refused: only redirects within %s are followed",
				Origin(req.URL), Origin(via[0].URL))
		}
		for name := range strip {
			req.Header.Del(name)
		}
		return nil
	}
}

// Client is an http.Client that follows redirects within the origin only.
func Client() *http.Client { return &http.Client{CheckRedirect: CheckRedirect(false, nil)} }

// Origin is a URL's scheme, host and port, the port always written.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
