"""query-api's Arrow Flight SQL door: ADBC and JDBC drivers, notebooks, SQL workbenches and Grafana reach the same
QueryService as the HTTP router, with the same keys, tenancy, admission, row cap and problems."""
