"""The synthetic world: facts, the pretraining corpus that states some of them, and labelled SFT pools."""
