package rpc

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/agyharness/agyharness/internal/textcache"
	"github.com/agyharness/agyharness/wire"
)

// textFrame is the wire JSON of a frame carrying planner steps whose
// members are given as JSON (name → value), and the run status.
func textFrame(status wire.RunStatus, steps ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"update":{"conversationId":"c","status":"` + string(status) + `","mainTrajectoryUpdate":{"stepsUpdate":{"indices":[`)
	for i := range steps {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(itoa(40 + i))
	}
	b.WriteString(`],"steps":[`)
	for i, s := range steps {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE","status":"CORTEX_STEP_STATUS_GENERATING","plannerResponse":{` + s + `}}`)
	}
	b.WriteString(`]}}}}`)
	return []byte(b.String())
}

// quoted is s as JSON, as encoding/json writes it.
func quoted(s string) string { return string(must(json.Marshal(s))) }

// planner is the planner body of a frame's first step.
func planner(t *testing.T, f *StreamFrame) *wire.PlannerResponse {
	t.Helper()
	steps := f.Update.MainTrajectoryUpdate.StepsUpdate.Steps
	require.NotEmpty(t, steps)
	require.NotNil(t, steps[0].PlannerResponse)
	return steps[0].PlannerResponse
}

// A live answer that grows from frame to frame is decoded once: each later
// frame unquotes only what it adds, appended in place to the text decoded
// before, and every frame's text is what DecodeFrame gives.
func TestStreamDecodesOnlyWhatATextAdds(t *testing.T) {
	var d frameDecoder
	text := strings.Repeat("A line of \"markdown\" → with <tags> & escapes.\n", 20)
	var texts []string
	for i := range 5 {
		text += "One more sentence.\n"
		payload := textFrame(wire.RunRunning, `"thinking":"short","modifiedResponse":`+quoted(text))
		f, err := d.decode(payload)
		require.NoError(t, err)
		want := must(DecodeFrame(payload))
		require.Equal(t, planner(t, want), planner(t, f))
		got := planner(t, f).ModifiedResponse
		if i > 0 {
			require.Equal(t, unsafe.StringData(texts[0]), unsafe.StringData(got),
				"frame %d's text continues the buffer of the first", i)
		}
		texts = append(texts, got)
		clear(payload) // the stream reads the next frame into it
	}
	for i, s := range texts {
		require.True(t, strings.HasPrefix(text, s) && len(s) == len(text)-19*(4-i),
			"frame %d's text is unchanged by later frames and by its payload's reuse", i)
	}
}

// A text that does not extend the last one gets a buffer of its own: what
// was handed out before is never written to.
func TestStreamTextRewrittenGetsANewBuffer(t *testing.T) {
	var d frameDecoder
	first := strings.Repeat("first answer ", 60)
	f1 := must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(first))))
	second := strings.Repeat("second answer ", 60)
	f2 := must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(second))))
	third := second + "and more"
	f3 := must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(third))))
	require.Equal(t, first, planner(t, f1).ModifiedResponse)
	require.Equal(t, second, planner(t, f2).ModifiedResponse)
	require.Equal(t, third, planner(t, f3).ModifiedResponse)
	require.NotEqual(t, unsafe.StringData(planner(t, f1).ModifiedResponse), unsafe.StringData(planner(t, f2).ModifiedResponse))
	require.Equal(t, unsafe.StringData(planner(t, f2).ModifiedResponse), unsafe.StringData(planner(t, f3).ModifiedResponse))
}

// Two values of one field in a frame (two live steps) are both right:
// the second is not appended where the first lies.
func TestStreamTextTwiceInAFrame(t *testing.T) {
	var d frameDecoder
	base := strings.Repeat("x", 600)
	must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(base))))
	a, b := base+"aaaa", base+"bb"
	f := must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(a), `"modifiedResponse":`+quoted(b))))
	steps := f.Update.MainTrajectoryUpdate.StepsUpdate.Steps
	require.Equal(t, a, steps[0].PlannerResponse.ModifiedResponse)
	require.Equal(t, b, steps[1].PlannerResponse.ModifiedResponse)
	f = must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(b+"c"))))
	require.Equal(t, b+"c", planner(t, f).ModifiedResponse, "the last value of the frame is the one remembered")
	require.Equal(t, a, steps[0].PlannerResponse.ModifiedResponse)
	require.Equal(t, b, steps[1].PlannerResponse.ModifiedResponse)
}

// An IDLE frame empties the cache: an idle stream holds no text.
func TestStreamForgetsTextsWhenIdle(t *testing.T) {
	var d frameDecoder
	text := strings.Repeat("y", 700)
	must(d.decode(textFrame(wire.RunRunning, `"thinking":`+quoted(text)+`,"modifiedResponse":`+quoted(text))))
	require.NotEqual(t, wire.StreamDecoder{}, d.texts, "the texts are remembered while the turn runs")
	f := must(d.decode(textFrame(wire.RunIdle, `"modifiedResponse":`+quoted(text+"."))))
	require.Equal(t, text+".", planner(t, f).ModifiedResponse)
	require.Equal(t, wire.StreamDecoder{}, d.texts)
}

// A frame that fails to decode leaves nothing remembered from it, and the
// next frame decodes as DecodeFrame does.
func TestStreamTextAfterAFailedFrame(t *testing.T) {
	var d frameDecoder
	text := strings.Repeat("z", 700)
	must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(text))))
	bad := textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(text+"bad")+`,"toolCalls":7`)
	_, err := d.decode(bad)
	require.ErrorIs(t, err, ErrProtocol)
	_, werr := DecodeFrame(bad)
	require.Error(t, werr, "DecodeFrame refuses it too")
	f := must(d.decode(textFrame(wire.RunRunning, `"modifiedResponse":`+quoted(text+"good"))))
	require.Equal(t, text+"good", planner(t, f).ModifiedResponse)
}

// textPieces are the pieces the fuzzer builds texts of: plain bytes, the
// short escapes, \u escapes (of ASCII, of the BMP, of surrogates alone and
// in pairs, in both cases), raw characters of several lengths, and raw
// bytes that are not UTF-8.
var textPieces = []string{
	"a", "Z", " ", ".", "<", "&", `\"`, `\\`, `\/`, `\n`, `\t`, `\r`, `\b`, `\f`,
	`\u0041`, `\u003c`, `\u00e9`, `\u2192`, `\uFFFD`, `\ud83d`, `\udcc1`, `\uD83D\uDCC1`, `\ud83d\ude00`, `\uDBFF`,
	"é", "→", "😀", "\xe2\x86", "\x80", "\xff", "\xc3",
}

// FuzzTextCacheDecodesAsDecodeFrame streams a text built of textPieces,
// cut anywhere (inside a character, between the halves of a surrogate
// pair), growing and sometimes rewritten, in the planner's three fields,
// through a frameDecoder: every frame must decode exactly as DecodeFrame
// decodes it, and every text handed out must stay as it was.
func FuzzTextCacheDecodesAsDecodeFrame(f *testing.F) {
	for op := range byte(3) { // every piece appended to a remembered text, in each way of carrying it
		var seed []byte
		for k := range byte(len(textPieces)) {
			seed = append(seed, op*8, k)
		}
		f.Add(seed)
	}
	f.Add([]byte{0, 1, 2, 3, 40, 5, 60, 7, 8, 90, 10, 200, 22, 23, 24, 25, 26, 27})
	f.Add([]byte("\x15\x15\x15\x16\x16\x1d\x1e\x1f\x20\x21\x22\x18\x10\x11\x12\x13"))
	f.Add([]byte{0xff, 0xfe, 0x80, 0x81, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			data = data[:512] // 256 frames: enough, and not quadratic in time
		}
		var d frameDecoder
		var content strings.Builder
		content.WriteString(strings.Repeat("p", textcache.MinText))
		type seen struct{ got, want string }
		var kept []seen
		for i := 0; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			switch op % 8 {
			case 6: // rewrite
				content.Reset()
				content.WriteString(strings.Repeat("q", textcache.MinText+int(arg)))
			case 7: // cut the last piece short, at a byte
				s := content.String()
				content.Reset()
				content.WriteString(s[:max(0, len(s)-int(arg)%4)])
			default:
				for range 1 + op%4 {
					content.WriteString(textPieces[int(arg)%len(textPieces)])
					arg = arg*31 + 7
				}
			}
			raw := `"` + content.String() + `"`
			if strings.HasSuffix(content.String(), `\`) && !strings.HasSuffix(content.String(), `\\`) {
				continue // cut inside an escape: not JSON
			}
			var members string
			switch op % 3 {
			case 0:
				members = `"modifiedResponse":` + raw
			case 1:
				members = `"thinking":` + raw + `,"modifiedResponse":` + raw + `,"response":` + raw
			default:
				members = `"modifiedResponse":` + raw + `,"modifiedResponse":null,"MODIFIEDRESPONSE":` + raw
			}
			status := wire.RunRunning
			if op == 255 {
				status = wire.RunIdle
			}
			payload := textFrame(status, members)
			want, werr := DecodeFrame(payload)
			got, gerr := d.decode(payload)
			if werr != nil || gerr != nil {
				require.Equal(t, werr != nil, gerr != nil, "both fail or neither: %v / %v", werr, gerr)
				continue
			}
			w, g := planner(t, want), planner(t, got)
			require.Equal(t, *w, *g, "frame %d: %q", i/2, raw)
			require.True(t, utf8.ValidString(g.ModifiedResponse))
			kept = append(kept, seen{g.ModifiedResponse, strings.Clone(w.ModifiedResponse)}, seen{g.Thinking, strings.Clone(w.Thinking)})
			clear(payload)
		}
		for _, k := range kept {
			require.Equal(t, k.want, k.got, "a text handed out changed afterwards")
		}
	})
}

// A step whose plannerResponse member comes twice, or is null, decodes as
// DecodeFrame decodes it (the later member merged into the earlier one, as
// encoding/json does).
func TestStreamPlannerResponseRepeated(t *testing.T) {
	long := quoted(strings.Repeat("w", 700))
	for _, step := range []string{
		`"plannerResponse":{"modifiedResponse":` + long + `},"plannerResponse":{"thinking":"t"}`,
		`"plannerResponse":{"modifiedResponse":` + long + `},"plannerResponse":{"modifiedResponse":null,"response":` + long + `}`,
		`"plannerResponse":{"modifiedResponse":` + long + `},"plannerResponse":null`,
		`"plannerResponse":null,"plannerResponse":{"thinking":` + long + `}`,
	} {
		payload := []byte(`{"update":{"status":"CASCADE_RUN_STATUS_RUNNING","mainTrajectoryUpdate":{"stepsUpdate":{"indices":[1],"steps":[{"type":"CORTEX_STEP_TYPE_PLANNER_RESPONSE",` + step + `}]}}}}`)
		want := must(DecodeFrame(payload))
		var d frameDecoder
		got := must(d.decode(payload))
		w, g := want.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0], got.Update.MainTrajectoryUpdate.StepsUpdate.Steps[0]
		require.Equal(t, w.PlannerResponse, g.PlannerResponse, step)
	}
}
