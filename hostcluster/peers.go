package hostcluster

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// peerFilter admits a remote connection only from the hosts given (this
// node's, AllowPeers, the automanaged peers) and the hosts of the current
// members. It is the remote endpoint's gRPC interceptor.
type peerFilter struct {
	fixed   map[string]bool // IPs
	members *membership
}

func newPeerFilter(hosts []string, members *membership) *peerFilter {
	f := &peerFilter{fixed: make(map[string]bool), members: members}
	for _, h := range hosts {
		for _, ip := range resolve(h) {
			f.fixed[ip] = true
		}
	}
	return f
}

// resolve is the IPs of a host name or address (none when it does not
// resolve: such a peer is never admitted).
func resolve(host string) []string {
	if ip := net.ParseIP(host); ip != nil {
		return []string{ip.String()}
	}
	addrs, err := net.LookupHost(host)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			out = append(out, ip.String())
		}
	}
	return out
}

// allowed says whether a connection from addr may speak to this node.
func (f *peerFilter) allowed(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip := tcp.IP.String()
	if f.fixed[ip] {
		return true
	}
	for _, st := range f.members.list() {
		host, _, err := net.SplitHostPort(st.Address)
		if err != nil || st.State == StateLost {
			continue
		}
		for _, m := range resolve(host) {
			if m == ip {
				return true
			}
		}
	}
	return false
}

func (f *peerFilter) check(ctx context.Context) error {
	p, ok := peer.FromContext(ctx)
	if !ok || !f.allowed(p.Addr) {
		return status.Error(codes.PermissionDenied, "agyharness: this address is not a member of the cluster")
	}
	return nil
}

func (f *peerFilter) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	if err := f.check(ss.Context()); err != nil {
		return err
	}
	defer recoverCall(&err)
	return handler(srv, ss)
}

func (f *peerFilter) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (_ any, err error) {
	if err := f.check(ctx); err != nil {
		return nil, err
	}
	defer recoverCall(&err)
	return handler(ctx, req)
}

// recoverCall turns a panic of a remote call's handler into the call's
// error. gRPC does not recover a handler's panic, and Proto.Actor's remote
// panics on the calls it declares and does not implement (ListProcesses,
// GetProcessDiagnostics): without this, one such call from any admitted
// address would end the node.
func recoverCall(err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "agyharness: the remote call failed: %v", r)
	}
}
