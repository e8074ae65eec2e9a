package rpc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/rpc/internal/connectserver"
	"github.com/agyharness/agyharness/wire"
)

func FuzzEnvelopeReader(f *testing.F) {
	f.Add(envelope(0, `{"update":{}}`))
	f.Add(append(envelope(0, ``), envelope(rpc.FlagEndStream, `{}`)...))
	f.Add(envelope(rpc.FlagCompressed, `x`))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{2, 0, 0})
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		r := rpc.NewEnvelopeReader(bytes.NewReader(data), limit)
		var again bytes.Buffer
		for {
			flags, payload, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, rpc.ErrProtocol) && !errors.Is(err, rpc.ErrMessageTooLarge) {
					t.Fatalf("unclassified error: %v", err)
				}
				if err == io.EOF && !bytes.Equal(again.Bytes(), data) {
					t.Fatalf("clean EOF but re-encoding differs")
				}
				return
			}
			if len(payload) > limit {
				t.Fatalf("payload of %d bytes over the limit", len(payload))
			}
			if flags&^rpc.FlagEndStream != 0 {
				t.Fatalf("accepted flags %#x", flags)
			}
			if err := connectserver.WriteEnvelope(&again, flags, payload); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzStepDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(agyStepsDir, "*.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"type":"X","metadata":{"sourceTrajectoryStepInfo":{"stepIndex":"7"}},"runCommand":{"exitCode":"1e3"}}`))
	f.Add([]byte(`{"metadata":{"modelUsage":{"inputTokens":"99999999999999999999"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s wire.Step
		if err := json.Unmarshal(data, &s); err == nil {
			if !json.Valid(s.Raw) {
				t.Fatalf("Raw is not JSON: %q", s.Raw)
			}
			_ = s.Index()
			_ = s.TrajectoryID()
			_ = s.Status.Terminal()
			if s.UserInput != nil && s.UserInput.UserConfig != nil {
				_ = s.UserInput.UserConfig.PlannerConfig.Model()
			}
			if _, err := json.Marshal(&s); err != nil {
				t.Fatalf("decoded step does not re-encode: %v", err)
			}
		}
		var frame rpc.StreamFrame
		_ = json.Unmarshal(data, &frame)
	})
}
