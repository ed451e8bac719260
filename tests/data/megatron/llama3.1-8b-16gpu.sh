# Llama 3.1 8B on 2 nodes of 8 GPUs: TP2 + SP, PP4 with 2 virtual stages, distributed optimizer.
torchrun --nproc_per_node 8 --nnodes 2 --node_rank 0 --master_addr node0 --master_port 6000 \
  pretrain_gpt.py \
  --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 \
  --group-query-attention --num-query-groups 8 --kv-channels 128 --swiglu \
  --normalization RMSNorm --untie-embeddings-and-output-weights --disable-bias-linear \
  --position-embedding-type rope --rotary-base 500000 \
  --seq-length 4096 --max-position-embeddings 131072 \
  --tensor-model-parallel-size 2 --sequence-parallel \
  --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4 \
  --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
  --tp-comm-overlap \
  --micro-batch-size 1 --global-batch-size 64 \
  --recompute-granularity full --recompute-method block --recompute-num-layers 2 \
  --bf16 --cross-entropy-loss-fusion --attention-backend flash \
  --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine --weight-decay 0.1 --clip-grad 1.0 \
  --seed 1234 --log-interval 1 --save /checkpoints/llama --save-interval 1000 \
  --data-path /data/tokens_text_document --split 99,1,0 \
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Llama-3.1-8B  # the tokenizer
