"""The SFT lab on real models: selections of a real GSM8K pool fine-tuned with LlamaFactory and evaluated."""
