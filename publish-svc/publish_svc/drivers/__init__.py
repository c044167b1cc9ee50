"""Platform drivers: each speaks one platform's HTTP API behind the same interface."""
