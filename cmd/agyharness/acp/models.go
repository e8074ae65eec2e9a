package acp

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agyharness/agyharness/rpc"
	"github.com/agyharness/agyharness/wire"
	sdk "github.com/coder/acp-go-sdk"
)

// modelConfigID is the id of the session's model config option.
const modelConfigID sdk.SessionConfigId = "model"

// loadModels reads agy's model catalog (GetAvailableModels) from the port
// the session is bound to. The order is stable: recommended first, then by
// display name.
func loadModels(ctx context.Context, port int, csrf string) ([]wire.ModelInfo, error) {
	c, err := rpc.NewClient(rpc.Config{Port: port, CSRFToken: csrf})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.GetAvailableModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("GetAvailableModels: %w", err)
	}
	out := make([]wire.ModelInfo, 0, len(res.Response.Models))
	for key, m := range res.Response.Models {
		if m.Model == "" {
			m.Model = key
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b wire.ModelInfo) int {
		if a.Recommended != b.Recommended {
			if a.Recommended {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.DisplayName, b.DisplayName), cmp.Compare(a.Model, b.Model))
	})
	return out, nil
}

// displayName is a model's name for people: its display name, else its enum.
func displayName(m wire.ModelInfo) string {
	if m.DisplayName != "" {
		return m.DisplayName
	}
	return m.Model
}

// modelOptions builds the "model" config option and the (unstable) model
// state from the catalog and the current model. A current model missing
// from the catalog is listed too, so the selection is always one of the
// options. With no catalog there is no option.
func modelOptions(models []wire.ModelInfo, current string) ([]sdk.SessionConfigOption, *sdk.SessionModelState) {
	if len(models) == 0 {
		return nil, nil
	}
	if current == "" {
		current = models[0].Model
	}
	found := false
	for _, m := range models {
		if m.Model == current {
			found = true
		}
	}
	if !found {
		models = append(append([]wire.ModelInfo{}, models...), wire.ModelInfo{Model: current})
	}
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(models))
	infos := make([]sdk.ModelInfo, 0, len(models))
	for _, m := range models {
		opts = append(opts, sdk.SessionConfigSelectOption{Name: displayName(m), Value: sdk.SessionConfigValueId(m.Model)})
		infos = append(infos, sdk.ModelInfo{ModelId: sdk.ModelId(m.Model), Name: displayName(m)})
	}
	category := sdk.SessionConfigOptionCategoryModel
	desc := "The model agy runs the next turns on"
	option := sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
		Id:           modelConfigID,
		Name:         "Model",
		Description:  &desc,
		Category:     &category,
		Type:         "select",
		CurrentValue: sdk.SessionConfigValueId(current),
		Options:      sdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}
	return []sdk.SessionConfigOption{option}, &sdk.SessionModelState{AvailableModels: infos, CurrentModelId: sdk.ModelId(current)}
}
