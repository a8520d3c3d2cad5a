"""The pages that read the three papers side by side: the leaderboard (and its costs and encode rates), the claims
ledger (its rows per paper, statements, checklist, summaries) and the combinations none of the papers tried."""
