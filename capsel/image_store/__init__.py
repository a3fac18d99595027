"""Images of multimodal candidates: content-addressed storage beside the DB."""
