package view

import "github.com/mailagent/mailagent/internal/llm"

// ToCostJSON is the model usage of a report (digest, replay): the price
// and the date of the price table only when the model's price is known.
func ToCostJSON(calls, in, out int64, model string, usd float64, known bool) CostJSON {
	c := CostJSON{Calls: calls, TokensIn: in, TokensOut: out, Model: model}
	if known {
		c.EstimatedUSD = &usd
		c.PriceAsOf = OptStr(llm.PricesAsOf)
	}
	return c
}
