package netpolicy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// newCA returns a self-signed CA certificate and its PEM encoding.
func newCA(t *testing.T, name string) (*x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// trusts reports whether pool verifies cert (a CA verifying itself).
func trusts(pool *x509.CertPool, cert *x509.Certificate) bool {
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool})
	return err == nil
}

func TestTLSConfigDoesNotMutateTheCallersPool(t *testing.T) {
	t.Parallel()
	callerCA, callerPEM := newCA(t, "caller CA")
	fileCA, filePEM := newCA(t, "file CA")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(callerPEM)
	before := pool.Clone()
	base := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS10, NextProtos: []string{"imap"}}

	cfg, err := TLSConfig("mail.example.com", writeFile(t, filePEM), base)
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	if !pool.Equal(before) || trusts(pool, fileCA) {
		t.Error("the caller's pool got the CA file's certificate, want it unchanged")
	}
	if base.RootCAs != pool || base.MinVersion != tls.VersionTLS10 || base.ServerName != "" {
		t.Errorf("the caller's config changed: got %+v", base)
	}
	if cfg.RootCAs == pool {
		t.Error("the result shares the caller's pool, want a copy")
	}
	if !trusts(cfg.RootCAs, fileCA) || !trusts(cfg.RootCAs, callerCA) {
		t.Error("the result's pool does not trust both the caller's CA and the file's")
	}
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ServerName != "mail.example.com" || cfg.NextProtos[0] != "imap" {
		t.Errorf("got MinVersion %x ServerName %q NextProtos %v, want TLS 1.2, the host and the caller's protocols", cfg.MinVersion, cfg.ServerName, cfg.NextProtos)
	}
}

func TestTLSConfigDoesNotMutateTheSystemPool(t *testing.T) {
	t.Parallel()
	sys, err := x509.SystemCertPool()
	if err != nil {
		t.Skipf("no system pool: %v", err)
	}
	fileCA, filePEM := newCA(t, "file CA")
	cfg, err := TLSConfig("mail.example.com", writeFile(t, filePEM), nil)
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	if !trusts(cfg.RootCAs, fileCA) {
		t.Error("the result does not trust the CA file")
	}
	again, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	if !again.Equal(sys) || trusts(again, fileCA) {
		t.Error("the system pool changed, want it as it was")
	}
}

func TestTLSConfig(t *testing.T) {
	t.Parallel()
	_, goodPEM := newCA(t, "CA")
	good := writeFile(t, goodPEM)
	tests := []struct {
		name    string
		host    string
		caFile  string
		base    *tls.Config
		wantErr error
		check   func(*testing.T, *tls.Config)
	}{
		{name: "defaults", host: "imap.example.com", check: func(t *testing.T, c *tls.Config) {
			if c.MinVersion != tls.VersionTLS12 || c.ServerName != "imap.example.com" || c.InsecureSkipVerify || c.RootCAs != nil {
				t.Errorf("got %+v, want TLS 1.2, the host as ServerName, verification on, system roots", c)
			}
		}},
		{name: "bracketed ipv6 host", host: "[::1]", check: func(t *testing.T, c *tls.Config) {
			if c.ServerName != "::1" {
				t.Errorf("ServerName: got %q, want ::1", c.ServerName)
			}
		}},
		{name: "caller's ServerName and TLS 1.3 kept", host: "h", base: &tls.Config{ServerName: "other", MinVersion: tls.VersionTLS13}, check: func(t *testing.T, c *tls.Config) {
			if c.ServerName != "other" || c.MinVersion != tls.VersionTLS13 {
				t.Errorf("got ServerName %q MinVersion %x, want other and TLS 1.3", c.ServerName, c.MinVersion)
			}
		}},
		{name: "verification off refused", host: "h", base: &tls.Config{InsecureSkipVerify: true}, wantErr: ErrInsecureTLS},
		{name: "verification off refused even with a CA file", host: "h", caFile: good, base: &tls.Config{InsecureSkipVerify: true}, wantErr: ErrInsecureTLS},
		{name: "missing CA file", host: "h", caFile: "/nonexistent/ca.pem", wantErr: ErrCAFile},
		{name: "CA file without PEM", host: "h", caFile: writeFile(t, []byte("not a certificate")), wantErr: ErrCAFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var baseCopy *tls.Config
			if tt.base != nil {
				baseCopy = tt.base.Clone()
			}
			cfg, err := TLSConfig(tt.host, tt.caFile, tt.base)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got error %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				tt.check(t, cfg)
			}
			if tt.base != nil && (tt.base.ServerName != baseCopy.ServerName || tt.base.MinVersion != baseCopy.MinVersion || tt.base.RootCAs != baseCopy.RootCAs) {
				t.Errorf("the caller's config changed")
			}
		})
	}
}
