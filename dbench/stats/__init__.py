"""The statistics behind every interval and verdict: Student's t without scipy, intervals from
rounds, two-sample and paired tests on log times, and false-discovery control over a table."""
