package llm

import (
	"strings"
)

// PricesAsOf is when the price table was last checked against the
// provider's published list prices. Prices change: treat the estimate
// as an order of magnitude.
const PricesAsOf = "2025-06-17"

// Price is a model's list price in US dollars per million tokens
// (standard tier, text, prompts up to 200k tokens).
type Price struct {
	InPerM, OutPerM float64
}

// prices are Google's published Gemini API list prices (paid tier) as of
// PricesAsOf. A model name matches the longest entry it starts with, so
// "gemini-2.5-flash-001" is priced as gemini-2.5-flash and
// "gemini-2.5-flash-lite" as itself.
var prices = map[string]Price{
	"gemini-2.5-pro":        {1.25, 10.00},
	"gemini-2.5-flash":      {0.30, 2.50},
	"gemini-2.5-flash-lite": {0.10, 0.40},
	"gemini-2.0-flash":      {0.10, 0.40},
	"gemini-2.0-flash-lite": {0.075, 0.30},
	"gemini-1.5-flash":      {0.075, 0.30},
	"gemini-1.5-pro":        {1.25, 5.00},
}

// PriceOf returns the list price of model, and false for a model the
// table does not know (the report then says "unknown").
func PriceOf(model string) (Price, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	m = strings.TrimPrefix(m, "models/")
	best, bestLen := Price{}, 0
	for name, p := range prices {
		if (m == name || strings.HasPrefix(m, name+"-")) && len(name) > bestLen {
			best, bestLen = p, len(name)
		}
	}
	return best, bestLen > 0
}

// Cost is the estimated price of tokensIn and tokensOut at p, in US
// dollars.
func (p Price) Cost(tokensIn, tokensOut int64) float64 {
	return float64(tokensIn)/1e6*p.InPerM + float64(tokensOut)/1e6*p.OutPerM
}
