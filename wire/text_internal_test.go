package wire

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// plannerWire must have PlannerResponse's members: a field added to one and
// not the other fails here.
func TestPlannerWireMatchesPlannerResponse(t *testing.T) {
	pr, pw := reflect.TypeFor[PlannerResponse](), reflect.TypeFor[plannerWire]()
	require.Equal(t, pr.NumField()-1, pw.NumField(), "PlannerResponse has raw besides")
	require.Equal(t, "raw", pr.Field(pr.NumField()-1).Name)
	for i := range pw.NumField() {
		a, b := pr.Field(i), pw.Field(i)
		require.Equal(t, a.Name, b.Name)
		require.Equal(t, a.Tag, b.Tag, a.Name)
		if b.Type == reflect.TypeFor[rawText]() {
			require.Equal(t, reflect.TypeFor[string](), a.Type, a.Name)
		} else {
			require.Equal(t, a.Type, b.Type, a.Name)
		}
	}
}
