# Mixtral 8x7B on 8 nodes of 8 GPUs: TP2 + SP, PP4, EP8 (expert TP 1), distributed optimizer.
srun --nodes=8 --ntasks-per-node=8 python pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
  --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu \
  --normalization RMSNorm --untie-embeddings-and-output-weights --disable-bias-linear \
  --position-embedding-type rope --rotary-base 1000000 \
  --num-experts 8 --moe-router-topk 2 --moe-grouped-gemm --moe-token-dispatcher-type alltoall \
  --moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 1e-2 --moe-permute-fusion \
  --seq-length 4096 --max-position-embeddings 32768 \
  --tensor-model-parallel-size 2 --sequence-parallel --pipeline-model-parallel-size 4 \
  --expert-model-parallel-size 8 --expert-tensor-parallel-size 1 \
  --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
  --micro-batch-size 1 --global-batch-size 256 \
  --recompute-granularity selective --recompute-modules moe_act layernorm \
  --bf16 --cross-entropy-loss-fusion \
  --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine --seed 42 --log-interval 1 \
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model mistralai/Mixtral-8x7B-v0.1 \
  --data-path /data/mixtral_text_document
