"""The server side of Strata's leased job queues: one scheduler and its wire schemas, configured per queue."""
