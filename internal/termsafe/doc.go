package termsafe
