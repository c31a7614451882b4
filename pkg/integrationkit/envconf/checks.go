package envconf

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// HostPort admits a listen address: host:port with a numeric port from 1 to 65535
// (the host may be empty, for every interface).
func HostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("want host:port such as 127.0.0.1:8081 or :8081, got %q", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want a port from 1 to 65535, got %q", port)
	}
	return nil
}

// HTTPURL admits an absolute http or https URL with a host and without credentials:
// a user:password@ in a URL ends up in logs, pages and process listings (secrets
// have variables of their own, which may come from a file). A refused URL is not
// echoed: some, like a Slack incoming webhook's, are secrets themselves.
func HTTPURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return errors.New("want an absolute http(s) URL")
	case u.User != nil:
		return errors.New("must not carry credentials (user:password@ before the host)")
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return errors.New("want an absolute http(s) URL such as https://host/path")
	}
	return nil
}

// PostgresURL admits a postgres:// or postgresql:// URL. It may carry credentials,
// so a refused one is never echoed.
func PostgresURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("want a postgres:// URL")
	}
	return nil
}
