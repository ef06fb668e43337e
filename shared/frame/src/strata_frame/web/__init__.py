"""HTTP plumbing shared by the three APIs: problem+json, auth, metrics, health. Not imported by domain code."""
