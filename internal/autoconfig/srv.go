package autoconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
)

// srvService is one RFC 6186 / RFC 8314 service label and what it means.
type srvService struct {
	service  string
	security string
}

// In preference order: RFC 8314 asks clients to prefer implicit TLS.
var (
	imapServices = []srvService{{"imaps", SecurityTLS}, {"imap", SecuritySTARTTLS}}
	smtpServices = []srvService{{"submissions", SecurityTLS}, {"submission", SecuritySTARTTLS}}
)

// errNotOffered marks an SRV answer whose only target is ".": RFC 2782's
// "this service is decidedly not available at this domain".
var errNotOffered = errors.New("service not offered (target \".\")")

// lookupSRV builds a Result from RFC 6186 SRV records. It needs an IMAP
// record; a missing submission record leaves SMTP nil.
func lookupSRV(ctx context.Context, r Resolver, domain, addr string) (*Result, error) {
	var errs []error
	find := func(services []srvService) *Server {
		for _, svc := range services {
			s, err := lookupOne(ctx, r, svc, domain)
			if err != nil {
				errs = append(errs, fmt.Errorf("_%s._tcp.%s: %w", svc.service, domain, err))
				continue
			}
			s.Username = addr
			s.Auth = AuthPassword
			return s
		}
		return nil
	}
	res := &Result{IMAP: find(imapServices)}
	if res.IMAP == nil {
		return nil, errors.Join(errs...)
	}
	res.SMTP = find(smtpServices)
	return res, nil
}

// lookupOne returns the best target of one SRV service: lowest priority,
// then highest weight (a deterministic stand-in for RFC 2782's weighted
// random choice, which only matters for load spreading).
func lookupOne(ctx context.Context, r Resolver, svc srvService, domain string) (*Server, error) {
	_, recs, err := r.LookupSRV(ctx, svc.service, "tcp", domain)
	if err != nil {
		return nil, err
	}
	var usable []*net.SRV
	dot := false
	for _, rec := range recs {
		if rec == nil {
			continue
		}
		target := strings.TrimSuffix(rec.Target, ".")
		if target == "" {
			dot = true
			continue
		}
		if rec.Port == 0 || !validHost(target) {
			continue
		}
		usable = append(usable, &net.SRV{Target: target, Port: rec.Port, Priority: rec.Priority, Weight: rec.Weight})
	}
	if len(usable) == 0 {
		if dot {
			return nil, errNotOffered
		}
		return nil, errors.New("no usable SRV record")
	}
	sort.SliceStable(usable, func(i, j int) bool {
		if usable[i].Priority != usable[j].Priority {
			return usable[i].Priority < usable[j].Priority
		}
		return usable[i].Weight > usable[j].Weight
	})
	best := usable[0]
	return &Server{Host: best.Target, Port: int(best.Port), Security: svc.security}, nil
}
