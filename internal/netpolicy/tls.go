package netpolicy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrInsecureTLS means a base configuration disabled certificate
// verification (InsecureSkipVerify), which mailagent never allows.
var ErrInsecureTLS = errors.New("tls certificate verification cannot be disabled")

// ErrCAFile means the extra CA file could not be read or held no PEM
// certificate.
var ErrCAFile = errors.New("tls ca file")

// TLSConfig returns a verifying TLS configuration for a connection to host.
//
// base, when not nil, is cloned and used as the starting point (tests pass
// their own RootCAs this way); it is never modified, and a base with
// InsecureSkipVerify is refused with ErrInsecureTLS. MinVersion is raised to
// TLS 1.2 when lower; ServerName defaults to host (without brackets).
//
// caFile, when not empty, names a PEM file of extra CA certificates. They
// are added to a copy of base.RootCAs, or else to a copy of the system pool
// (a new, empty pool when the system has none): the caller's pool and the
// process-wide system pool stay as they were. A file that cannot be read or
// holds no certificate is an error wrapping ErrCAFile.
func TLSConfig(host, caFile string, base *tls.Config) (*tls.Config, error) {
	var cfg *tls.Config
	if base != nil {
		if base.InsecureSkipVerify {
			return nil, ErrInsecureTLS
		}
		cfg = base.Clone()
	} else {
		cfg = &tls.Config{}
	}
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	if cfg.ServerName == "" {
		cfg.ServerName = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCAFile, err)
	}
	var pool *x509.CertPool
	if cfg.RootCAs != nil {
		pool = cfg.RootCAs.Clone() // Clone of the *tls.Config shares the pool
	} else if pool, err = x509.SystemCertPool(); err != nil {
		// SystemCertPool returns a fresh copy on every call.
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w %s: no PEM certificate in it", ErrCAFile, caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}
