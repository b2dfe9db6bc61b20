"""The provider names of the contract (CONTRACT 4.2), as they appear in paths. A name the node
has no adapter for yet answers ``provider_not_enabled``; any other name is ``unknown_provider``."""

CONTRACT_PROVIDERS = ("stripe", "paypal", "paddle", "btcpay", "manual")
