package hostcluster

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Proto.Actor's gossip throttles its error logs with a goroutine
		// that lives 60 s after the first one (a peer that stopped answers
		// gossip no more), whoever stopped.
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster.(*Gossiper).StartGossiping.NewThrottle.func3.1"),
		goleak.IgnoreAnyFunction("github.com/asynkron/protoactor-go/cluster.NewGossipActor.NewThrottleWithLogger.func2.1"),
		// The pinned etcd provider never closes its etcd client: its
		// connection and lease loops live until the process exits.
		goleak.IgnoreTopFunction("go.etcd.io/etcd/client/v3.(*lessor).deadlineLoop"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/client/v3.(*lessor).recvKeepAliveLoop"),
		goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransport"),
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
	)
}
