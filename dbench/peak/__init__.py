"""`dbench peak`: this machine's ceilings for the roofline, measured (`measure`) and read back (`ceilings`)."""
