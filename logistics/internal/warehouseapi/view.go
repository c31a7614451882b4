package warehouseapi

import "handoff/logistics/internal/shipment"

// detailView is a shipment with its history, oldest change first.
type detailView struct {
	shipment.View
	History []shipment.ChangeView `json:"history"`
}

type listView struct {
	Items      []shipment.View `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

func detailOf(d shipment.Detail) detailView {
	return detailView{View: shipment.ViewOf(d.Shipment), History: shipment.HistoryView(d.History)}
}
