"""The Gmail pipeline: consent and tokens, the Gmail client protocol and its one googleapiclient adapter, pacing at
Google's quota, listing, thread-aware fetching and settling, the scan and the Message-ID backfill. Never imports the
mbox pipeline."""
