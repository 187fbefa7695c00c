"""The store: counting records into senders, seen mail, the monthly rollups and the search index, in batches that
one bad record cannot fail. Both pipelines write through it; it knows neither."""
