package acp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agyharness/agyharness/actors"
	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/require"
)

func TestDebugHistory(t *testing.T) {
	srv := agytest.Start(t, fake(scenario(agytest.Say("An earlier answer.", 3))))
	require.NoError(t, srv.TypeTurn("an earlier question"))
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.WaitIdle(wctx, srv.ConversationID()))
	host := actors.NewHost(fastHost())
	defer host.Shutdown(context.Background())
	s, err := host.Attach(wctx, actors.Spec{Port: srv.Port()})
	require.NoError(t, err)
	tm := time.After(time.Second)
	for {
		select {
		case ev := <-s.Events():
			b, _ := json.Marshal(ev)
			t.Log(string(b))
		case <-tm:
			s.Detach(context.Background())
			return
		}
	}
}
